//! Method tests on small hand-written trajectories.
