"""The core layer: concepts every other layer uses and that import nothing of ecab above them (the unit of
work and its key, seed derivation)."""
