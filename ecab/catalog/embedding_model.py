"""Which model embeds a catalog: its name (recorded in meta.json and the catalog fingerprint) and its
vector dimension. Its own module so the full embedder (embed.py) and the ONNX encoder (onnx_encoder.py)
both read it without importing each other."""

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
DIM = 384
