"""What every trained decoder shares, read from its description so that no code here names a
model: the GGUF file converted once into the cache (``conversion``, ``converted``), the
tokenizer (``tokenizer``, ``tokenizer_json``), loading (``loading``, ``weights_file``), the
forward pass with a named place for every activation (``model``, ``layer_math``),
generation with a KV cache (``generate``), the induction demonstration, the report the
command line and the Layers dock read (``report``), the stage view's pieces (``pieces``) and
the engine's weight source (``source``). ``kit.kit_for(model)`` joins them to one model's
package. Only model, layer_math, weights_file, loading, generate, induction_demo and source
import torch.
"""
