"""Model shapes of the rig: a Kimi-K2/DeepSeek-V3-shaped MoE (MLA attention,
routed experts plus one shared expert, a first dense layer), scaled down in
layers and experts so that it loads in seconds and fits two GPUs. The config
is written as a Hugging Face DeepseekV3 config.json, which is also what
profdeck's micro phase reads with --model-config.
"""
import json

# Kimi-K2's widths (hidden 7168, 64 heads of MLA with q_lora 1536, kv_lora 512,
# 128+64 query/key dims, 128 value dims, experts 2048 wide, 163840 tokens),
# with 6 layers (1 dense, 5 MoE) and 64 routed experts (top 8).
PRESETS = {
    "kimi-scaled": dict(
        hidden_size=7168, num_hidden_layers=6, num_attention_heads=64,
        q_lora_rank=1536, kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128,
        intermediate_size=18432, moe_intermediate_size=2048, n_routed_experts=64, num_experts_per_tok=8,
        n_shared_experts=1, first_k_dense_replace=1, moe_layer_freq=1, vocab_size=163840,
    ),
    # The same layout, small enough for a CPU (tests, laptops).
    "tiny": dict(
        hidden_size=256, num_hidden_layers=3, num_attention_heads=8,
        q_lora_rank=64, kv_lora_rank=64, qk_nope_head_dim=32, qk_rope_head_dim=16, v_head_dim=32,
        intermediate_size=512, moe_intermediate_size=128, n_routed_experts=8, num_experts_per_tok=2,
        n_shared_experts=1, first_k_dense_replace=1, moe_layer_freq=1, vocab_size=4096,
    ),
}


def hf_config(preset):
    """The config.json of a preset, in DeepseekV3's Hugging Face form."""
    c = dict(PRESETS[preset])
    c.update(
        architectures=["DeepseekV3ForCausalLM"], model_type="deepseek_v3", torch_dtype="bfloat16",
        num_key_value_heads=c["num_attention_heads"], hidden_act="silu", rms_norm_eps=1e-6,
        rope_theta=50000.0, max_position_embeddings=4096, routed_scaling_factor=2.5,
        scoring_func="softmax", topk_method="greedy", n_group=1, topk_group=1, norm_topk_prob=True,
        tie_word_embeddings=False, bos_token_id=0, eos_token_id=1, fieldrig_preset=preset,
    )
    return c


class Shapes:
    """The fields the model code reads from a config.json."""

    def __init__(self, c):
        self.hidden = c["hidden_size"]
        self.layers = c["num_hidden_layers"]
        self.heads = c["num_attention_heads"]
        self.q_lora = c["q_lora_rank"]
        self.kv_lora = c["kv_lora_rank"]
        self.nope = c["qk_nope_head_dim"]
        self.rope = c["qk_rope_head_dim"]
        self.v = c["v_head_dim"]
        self.inter = c["intermediate_size"]
        self.moe_inter = c["moe_intermediate_size"]
        self.experts = c["n_routed_experts"]
        self.topk = c["num_experts_per_tok"]
        self.shared = c.get("n_shared_experts") or 0
        self.first_dense = c.get("first_k_dense_replace") or 0
        self.vocab = c["vocab_size"]
        self.eps = c.get("rms_norm_eps", 1e-6)
        self.rope_theta = c.get("rope_theta", 10000.0)
        self.scale_routed = c.get("routed_scaling_factor", 1.0)

    def is_moe(self, layer):
        return self.experts > 0 and layer >= self.first_dense


def load(path):
    with open(path) as f:
        return json.load(f)
