"""A world where the truth is known: its pretraining corpus and a tiny policy born in it (`darling world corpus |
pretrain`). The world itself (its vocabulary and the rules that read it) is ``darling.core.world``: the checker and
the quality that other stages use live below them."""
