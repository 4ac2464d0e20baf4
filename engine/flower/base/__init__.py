"""The leaf layer: what every other layer of the engine needs and that needs none of them.

The translated texts (``i18n``), what a secret looks like and where credentials live
(``secrets``), how files are written and what a disk fault means (``files``), and how many
tokens a request's usage says the model saw (``usage``). Nothing here imports another part of
flower (tests/unit/test_layers.py holds every layer to its place).
"""
