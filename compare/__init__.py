"""Other ways to copy a cluster (MirrorMaker 2 style, legacy MirrorMaker), measured
against cluster mirroring."""
