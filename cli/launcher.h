// What an MPI launcher (OpenMPI's mpirun, or a PMI launcher such as Slurm's
// srun) told this process through its environment.
#pragma once

namespace pipeplan::cli {

// This process's rank; 0 when no launcher started it.
int launcher_rank();
// The processes the launcher started; 1 when none did.
int launcher_size();

}  // namespace pipeplan::cli
