"""The kernel DSL: Tile, GM views, pto.* instruction functions, @kernel."""
