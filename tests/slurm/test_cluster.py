"""The test Slurm itself: a two-node job runs on it, and accounting keeps it (the fixture's check that the
cluster is real)."""

from __future__ import annotations

from processes import wait_for
from slurm_cluster import Cluster


def test_a_two_node_job_runs_on_both_nodes(cluster: Cluster) -> None:
    out = cluster.root / "two-nodes.out"
    done = cluster.run("sbatch", "--wait", "--parsable", "-N2", "-o", str(out), "--wrap",
                       "srun bash -c 'echo $SLURMD_NODENAME'")
    assert done.returncode == 0, done.stderr + cluster.logs()
    assert sorted(out.read_text().split()) == ["n1", "n2"]
    if cluster.accounting:  # slurmdbd over the cluster's own MariaDB keeps the job
        argv = ("sacct", "-n", "-P", "-X", "-j", done.stdout.strip(), "-o", "State,NodeList")
        wait_for(lambda: cluster.run(*argv).stdout.strip() == "COMPLETED|n[1-2]", 30, "sacct to keep the job")
