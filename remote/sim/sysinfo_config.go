package sim

// kimiK25Config is the model config the simulated host's Hugging Face cache
// holds for its default model (a copy of the shared fixture
// kimi-k2.5-config.json: the Kimi-K2.5 config.json, text_config and
// quantization parts).
const kimiK25Config = `{
  "architectures": ["KimiK25ForConditionalGeneration"],
  "model_type": "kimi_k25",
  "text_config": {
    "architectures": ["DeepseekV3ForCausalLM"],
    "model_type": "kimi_k2",
    "hidden_size": 7168,
    "intermediate_size": 18432,
    "moe_intermediate_size": 2048,
    "num_hidden_layers": 61,
    "first_k_dense_replace": 1,
    "num_attention_heads": 64,
    "num_key_value_heads": 64,
    "q_lora_rank": 1536,
    "kv_lora_rank": 512,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "n_routed_experts": 384,
    "num_experts_per_tok": 8,
    "n_shared_experts": 1,
    "n_group": 1,
    "topk_group": 1,
    "topk_method": "noaux_tc",
    "scoring_func": "sigmoid",
    "routed_scaling_factor": 2.827,
    "vocab_size": 163840,
    "max_position_embeddings": 262144,
    "torch_dtype": "bfloat16",
    "quantization_config": {
      "quant_method": "compressed-tensors",
      "format": "pack-quantized",
      "config_groups": {
        "group_0": {
          "targets": ["Linear"],
          "weights": {"num_bits": 4, "type": "int", "symmetric": true, "strategy": "group", "group_size": 32}
        }
      },
      "ignore": ["lm_head", "re:.*self_attn.*", "re:.*shared_experts.*"]
    }
  }
}`
