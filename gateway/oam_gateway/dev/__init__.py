"""``oam-gateway dev``: the embedded database's demo tenant (``provision``), its state directory
(``state``), the running dev processes (``running``) and the shell lines it prints (``flow``)."""
