// Specs built in code for the analytic-model tests (no catalog files): the shapes and
// datasheet figures below are those of the catalog entries they mirror, with their sources.
#pragma once

#include "hardware_fixtures.hpp"
#include "simrun/sim/scenario.hpp"

namespace simrun::test {

// Llama-3 70B (Llama Team 2024, arXiv:2407.21783 Table 3; HF config.json).
inline ModelSpec llama3_70b() {
  ModelSpec m;
  m.name = "llama3-70b";
  m.layers = 80;
  m.hidden = 8192;
  m.heads = 64;
  m.kv_heads = 8;
  m.head_dim = 128;
  m.ffn_hidden = 28672;
  m.ffn_act = FfnActivation::swiglu;
  m.norm = NormKind::rmsnorm;
  m.vocab = 128256;
  m.seq_len = 8192;
  m.published_params = 70.6e9;
  return m;
}

// A GPT-style MHA model with ffn = 4h and GELU: the shape Korthikanti et al. 2022 derive
// their activation table for. Defaults: GPT-3 175B (Brown et al. 2020, Table 2.1).
inline ModelSpec gpt_mha(int64_t layers = 96, int64_t hidden = 12288, int64_t heads = 96,
                         int64_t seq_len = 2048, int64_t vocab = 51200) {
  ModelSpec m;
  m.name = "gpt";
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = heads;
  m.head_dim = hidden / heads;
  m.ffn_hidden = 4 * hidden;
  m.ffn_act = FfnActivation::gelu;
  m.norm = NormKind::layernorm;
  m.vocab = vocab;
  m.seq_len = seq_len;
  m.attention_bias = true;
  m.mlp_bias = true;
  return m;
}

inline ClusterSpec h100_cluster(int64_t num_gpus) {
  ClusterSpec c;
  c.gpu = h100_sxm();
  c.num_gpus = num_gpus;
  c.gpus_per_node = 8;
  c.fabric = ib_ndr();
  c.nics_per_node = 8;
  return c;
}

// The repository's headline run: Llama-3 70B on 1024 H100, tp8 pp4 dp32, vpp 5, SP, ZeRO-1,
// selective recompute, global batch 512 (examples/llama3-70b-h100.json).
inline Scenario llama3_70b_1024_h100() {
  Scenario s;
  s.file = "test";
  s.model = llama3_70b();
  s.cluster = h100_cluster(1024);
  s.layout.tp = 8;
  s.layout.pp = 4;
  s.layout.dp = 32;
  s.layout.virtual_stages = 5;
  s.layout.sequence_parallel = true;
  s.layout.zero_stage = 1;
  s.layout.micro_batch = 1;
  s.layout.global_batch = 512;
  s.layout.recompute = Recompute::selective;
  s.layout.precision = Precision::bf16;
  s.layout.flash_attention = true;
  s.run.tokens = 1.4e12;
  s.run.usd_per_gpu_hour = 5.0;
  s.run.gpu_mtbf_hours = 50000;
  return s;
}

}  // namespace simrun::test
