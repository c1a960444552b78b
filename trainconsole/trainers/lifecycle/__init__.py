"""What every run process does around its work: heartbeat and requests, the queue, stops, the end."""
