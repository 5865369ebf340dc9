"""The process group a launcher set up for this process: torchrun (``srun torchrun`` on SLURM) starts
one pytest per rank with these variables, and the data-parallel cases then train in that group instead
of spawning their own processes, so that they can span hosts. Pure: reads a mapping of variables."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")


class LaunchError(ValueError):
    """A launcher's variables that are incomplete or not numbers."""


@dataclass(frozen=True)
class Launch:
    rank: int
    world: int
    local_rank: int

    @property
    def reports(self) -> bool:
        """Rank 0 writes the run document, the report and the baselines; the other ranks train along."""
        return self.rank == 0


def from_environment(environ: Mapping[str, str]) -> Launch | None:
    """The launch this process is part of, or None where no launcher set the variables."""
    present = [name for name in VARIABLES if environ.get(name)]
    if not present:
        return None
    missing = [name for name in VARIABLES if name not in present]
    if missing:
        raise LaunchError(
            f"a launcher set {', '.join(present)} but not {', '.join(missing)}: start pytest with torchrun, "
            "which sets all of them, or unset them to let the data-parallel cases start their own processes"
        )
    try:
        rank, world, local_rank = (int(environ[name]) for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK"))
    except ValueError as error:
        raise LaunchError(f"RANK, WORLD_SIZE and LOCAL_RANK must be whole numbers: {error}") from error
    if not 0 <= rank < world or local_rank < 0:
        raise LaunchError(f"RANK={rank} must lie in 0..WORLD_SIZE-1 (WORLD_SIZE={world}); LOCAL_RANK={local_rank}")
    return Launch(rank, world, local_rank)
