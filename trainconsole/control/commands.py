"""What each kind of run executes: our entry points (`python -P -m ...`), and the queue waiter before them."""

from __future__ import annotations

from trainconsole.protocol.launch import module_command

#: What each kind of run executes, "{run_dir}" being its directory (`--resume` is appended to resume).
COMMANDS = {kind: [*module_command(module), "{run_dir}"] for kind, module in
            (("train", "trainconsole.trainers"), ("tune", "trainconsole.trainers.tune"),
             ("script", "trainconsole.trainers.scripts"))}
#: A queued run's first command: the waiter, which becomes the kind's command once devices have room.
QUEUE_WAITER = [*module_command("trainconsole.trainers.lifecycle.queue"), "{run_dir}", "--"]
#: Our entry points: each installs its stop handler, then takes the stops held back while it started.
OUR_MODULES = frozenset(command[3] for command in [*COMMANDS.values(), QUEUE_WAITER])
