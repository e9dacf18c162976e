// Tests of count_params and count_flops_per_sequence: published totals, exact checkpoint
// counts, and Megatron-LM's closed forms.
#include <catch2/catch.hpp>
#include <cmath>
#include <map>

#include "model_catalog_fixture.hpp"
#include "simrun/models/catalog.hpp"
#include "simrun/models/counts.hpp"

using namespace simrun;
using simrun::test::shipped_model_catalog;

namespace {

double rel_error(double got, double want) { return std::abs(got - want) / want; }

ModelSpec dense(int64_t L, int64_t h, int64_t a, int64_t g, int64_t ffn, FfnActivation act, int64_t V,
                int64_t s) {
  ModelSpec m;
  m.name = "test";
  m.layers = L;
  m.hidden = h;
  m.heads = a;
  m.kv_heads = g;
  m.head_dim = h / a;
  m.ffn_hidden = ffn;
  m.ffn_act = act;
  m.vocab = V;
  m.seq_len = s;
  return m;
}

}  // namespace

TEST_CASE("parameter counts of every catalog model are within 1% of the published totals",
          "[models][counts]") {
  // Published totals, kept here (not read from the data files) so a data edit cannot move the
  // oracle. Sources: each model's paper or model card, as cited in its catalog file.
  const std::map<std::string, double> published = {
      {"gpt3-175b", 175e9},      {"mt-nlg-530b", 530e9},     {"bloom-176b", 176.2e9},  {"llama2-7b", 6.74e9},
      {"llama2-13b", 13.0e9},    {"llama2-70b", 69.0e9},     {"llama3-8b", 8.03e9},    {"llama3-70b", 70.6e9},
      {"llama3-405b", 405.9e9},  {"mistral-7b", 7.24e9},     {"mixtral-8x7b", 46.7e9}, {"deepseek-v3", 671e9},
      {"qwen3-30b-a3b", 30.5e9}, {"qwen3-235b-a22b", 235e9},
  };
  REQUIRE(shipped_model_catalog().ids().size() == published.size());
  for (const auto& [id, want] : published) {
    const ModelSpec& m = shipped_model_catalog().get(id, "test", "model");
    const double got = count_params(m).total();
    INFO(id << ": counted " << got / 1e9 << "B, published " << want / 1e9 << "B");
    CHECK(rel_error(got, want) < 0.01);
    CHECK(m.published_params == want);
  }
}

TEST_CASE("dense checkpoints count to the exact tensor sizes of their HF safetensors", "[models][counts]") {
  // Totals of the published checkpoints' tensors (HF safetensors metadata "total").
  CHECK(count_params(shipped_model_catalog().get("llama3-8b", "t", "m")).total() == 8'030'261'248.0);
  CHECK(count_params(shipped_model_catalog().get("llama3-70b", "t", "m")).total() == 70'553'706'496.0);
  CHECK(count_params(shipped_model_catalog().get("llama2-7b", "t", "m")).total() == 6'738'415'616.0);
  CHECK(count_params(shipped_model_catalog().get("mixtral-8x7b", "t", "m")).total() == 46'702'792'704.0);
}

TEST_CASE("active parameters of MoE models match the published figures", "[models][counts][moe]") {
  // Mixtral 8x7B: "12.9B active parameters per token" (Mistral AI announcement); Mistral counts
  // the embedding and output matrices in full, as active() does.
  const ModelSpec& mix = shipped_model_catalog().get("mixtral-8x7b", "t", "m");
  const ParamCounts mc = count_params(mix);
  CHECK(rel_error(mc.active(mix), 12.9e9) < 0.01);

  // DeepSeek-V3: "37B activated" (arXiv:2412.19437 abstract). DeepSeek leaves the input
  // embedding table out of activated parameters (a token reads one row of it): that gives
  // 36.63B, which rounds to the printed 37B; counting the table in full would give 37.55B,
  // which does not. Compare to the precision printed (±0.5B).
  const ModelSpec& ds = shipped_model_catalog().get("deepseek-v3", "t", "m");
  const ParamCounts dc = count_params(ds);
  const double deepseek_activated = dc.active(ds) - dc.embedding;
  INFO("activated without input embedding: " << deepseek_activated / 1e9 << "B");
  CHECK(std::abs(deepseek_activated - 37e9) <= 0.5e9);
  CHECK(dc.active(ds) > deepseek_activated);

  // The checkpoint holds 685B: 671B main + 14B MTP module, whose files repeat the shared
  // embedding and output head (DeepSeek-V3 model card).
  CHECK(rel_error(dc.total() + dc.mtp + dc.embedding + dc.output, 685e9) < 0.005);
  CHECK(dc.mtp > 0);

  // Dense models: active = total.
  const ModelSpec& l8 = shipped_model_catalog().get("llama3-8b", "t", "m");
  CHECK(count_params(l8).active(l8) == count_params(l8).total());
}

TEST_CASE("parameter components add up and follow the architecture", "[models][counts]") {
  SECTION("GQA shrinks K and V: llama3-70b attention = L·(h·(q+2k) + q·h)") {
    const ModelSpec& m = shipped_model_catalog().get("llama3-70b", "t", "m");
    const ParamCounts c = count_params(m);
    const double h = 8192, q = 8192, k = 1024, L = 80;
    CHECK(c.attention == L * (h * (q + 2 * k) + q * h));
    CHECK(c.mlp_dense == L * 3 * h * 28672);
    CHECK(c.norms == (2 * L + 1) * h);
    CHECK(c.embedding == 128256 * h);
    CHECK(c.output == 128256 * h);
    CHECK(c.per_layer(m) == (c.attention + c.mlp_dense + 2 * L * h) / L);
  }
  SECTION("GPT-3: tied output, learned positions, LayerNorm 2h, biases") {
    const ModelSpec& m = shipped_model_catalog().get("gpt3-175b", "t", "m");
    const ParamCounts c = count_params(m);
    const double h = 12288, L = 96, f = 49152;
    CHECK(c.output == 0);
    CHECK(c.embedding == (50257 + 2048) * h);
    CHECK(c.norms == (2 * L + 1) * 2 * h);
    CHECK(c.attention == L * (4 * h * h + 4 * h));
    CHECK(c.mlp_dense == L * (2 * h * f + f + h));
  }
  SECTION("DeepSeek-V3 MLA counts its low-rank projections and their norms") {
    const ModelSpec& m = shipped_model_catalog().get("deepseek-v3", "t", "m");
    const ParamCounts c = count_params(m);
    const double per_layer = 7168.0 * 1536 + 1536 + 1536.0 * 128 * 192 + 7168.0 * 576 + 512 +
                             512.0 * 128 * 256 + 128.0 * 128 * 7168;
    CHECK(c.attention == 61 * per_layer);
    CHECK(c.experts_routed == 58.0 * 256 * 3 * 7168 * 2048);
    CHECK(c.experts_shared == 58.0 * 1 * 3 * 7168 * 2048);
    CHECK(c.router == 58.0 * 256 * 7168);
    CHECK(c.mlp_dense == 3.0 * 3 * 7168 * 18432);
  }
}

TEST_CASE("FLOPs equal Megatron's closed form (causal, HEAD)", "[models][flops]") {
  // ecosystem.md §6.2, batch B = 1:
  //   F = 6·s·[L·h·ffn·f + L·(h·(q+2k) + q·h) + h·V] + 6·s²·L·q
  // HEAD's score term is 3·2·q/2·2 per (token, token) pair: the /2 is the causal mask.
  const std::vector<ModelSpec> configs = {
      shipped_model_catalog().get("llama3-70b", "t", "m"),
      shipped_model_catalog().get("llama2-7b", "t", "m"),
      shipped_model_catalog().get("gpt3-175b", "t", "m"),
      dense(7, 96, 6, 2, 200, FfnActivation::swiglu, 97, 1025),
  };
  for (const auto& m : configs) {
    INFO(m.name);
    const double s = m.seq_len, L = m.layers, h = m.hidden, V = m.vocab;
    const double q = double(m.heads * m.head_dim), k = double(m.kv_heads * m.head_dim);
    const double f = m.ffn_act == FfnActivation::swiglu ? 3 : 2;
    const double closed =
        6 * s * (L * h * m.ffn_hidden * f + L * (h * (q + 2 * k) + q * h) + h * V) + 6 * s * s * L * q;
    const FlopCounts got = count_flops_per_sequence(m, AttentionFlops::causal);
    CHECK(got.total() == Approx(closed).epsilon(1e-12));
    CHECK(got.attention_core == Approx(6 * s * s * L * q).epsilon(1e-12));
    CHECK(got.logits == Approx(6 * s * h * V).epsilon(1e-12));
  }
}

TEST_CASE("non-causal FLOPs match Narayanan et al.'s 72·B·s·l·h²·(1 + s/6h + V/12lh)", "[models][flops]") {
  // Narayanan et al. 2021 (SC21) eq. for GPT models without recompute (their 96 includes the
  // recompute forward; 72 = 3/4 of it). Megatron core_r0.8 uses the same non-causal s² term.
  for (const char* id : {"gpt3-175b", "mt-nlg-530b"}) {
    const ModelSpec& m = shipped_model_catalog().get(id, "t", "m");
    const double s = m.seq_len, l = m.layers, h = m.hidden, V = m.vocab;
    const double narayanan = 72 * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
    INFO(id);
    CHECK(count_flops_per_sequence(m, AttentionFlops::non_causal).total() ==
          Approx(narayanan).epsilon(1e-12));
  }
  // The two conventions differ by exactly half the non-causal score term.
  const ModelSpec& m = shipped_model_catalog().get("llama3-8b", "t", "m");
  const double nc = count_flops_per_sequence(m, AttentionFlops::non_causal).attention_core;
  const double c = count_flops_per_sequence(m, AttentionFlops::causal).attention_core;
  CHECK(nc == Approx(2 * c));
}

TEST_CASE("MoE FLOPs use top_k routed plus shared experts", "[models][flops][moe]") {
  SECTION("Mixtral: the same as a dense model of FFN width top_k·expert_ffn_hidden") {
    const ModelSpec& mix = shipped_model_catalog().get("mixtral-8x7b", "t", "m");
    ModelSpec as_dense = mix;
    as_dense.moe.reset();
    as_dense.ffn_hidden = 2 * 14336;
    CHECK(count_flops_per_sequence(mix, AttentionFlops::causal).total() ==
          Approx(count_flops_per_sequence(as_dense, AttentionFlops::causal).total()).epsilon(1e-12));
  }
  SECTION("DeepSeek-V3: GEMM FLOPs = 6·s·(active matrix parameters)") {
    const ModelSpec& ds = shipped_model_catalog().get("deepseek-v3", "t", "m");
    const ParamCounts c = count_params(ds);
    // Active matrices: everything active except the embedding table, the output head (logits),
    // norms (incl. MLA's lora norms) and routers, which Megatron does not count.
    const double mla_norms = 61.0 * (1536 + 512);
    const double matrices = c.active(ds) - c.embedding - c.output - c.norms - c.router - mla_norms;
    const FlopCounts f = count_flops_per_sequence(ds, AttentionFlops::causal);
    CHECK(f.dense_gemms == Approx(6.0 * 4096 * matrices).epsilon(1e-12));
    // MLA scores: per (query, key) pair a·(d_nope + d_rope) for QKᵀ and a·d_v for PV.
    CHECK(f.attention_core == Approx(3.0 * 2 * 4096.0 * 4096 * 61 * 128 * (192 + 128) / 2).epsilon(1e-12));
  }
}

TEST_CASE("parameters tensor parallelism keeps whole: norms, row-parallel biases, MLA down-projections",
          "[models][counts]") {
  // Llama: two RMSNorms of h. GPT-3 (LayerNorm, biases): two LayerNorms (2h each) and the
  // output projection's bias; a dense FFN adds its FC2 bias.
  const ModelSpec& llama = shipped_model_catalog().get("llama3-70b", "t", "m");
  CHECK(tp_replicated_layer_params(llama) == 2.0 * 8192);
  CHECK(tp_replicated_ffn_params(llama) == 0.0);
  const ModelSpec& gpt = shipped_model_catalog().get("gpt3-175b", "t", "m");
  CHECK(tp_replicated_layer_params(gpt) == 2 * 2.0 * 12288 + 12288);
  CHECK(tp_replicated_ffn_params(gpt) == 12288);
  // DeepSeek-V3 (h 7168, r_q 1536, r_kv 512, d_rope 64): the down-projections h·r_q and
  // h·(r_kv + d_rope) with their latent RMSNorms.
  const ModelSpec& ds = shipped_model_catalog().get("deepseek-v3", "t", "m");
  CHECK(tp_replicated_layer_params(ds) == 2.0 * 7168 + 7168.0 * 1536 + 1536 + 7168.0 * (512 + 64) + 512);
}

TEST_CASE("the layers' FLOPs and the logits add up to the sequence's, dense and MoE", "[models][flops]") {
  for (const char* name : {"llama3-8b", "gpt3-175b", "mixtral-8x7b", "deepseek-v3", "qwen3-30b-a3b"}) {
    const ModelSpec& m = shipped_model_catalog().get(name, "t", "m");
    const FlopCounts whole = count_flops_per_sequence(m, AttentionFlops::causal);
    FlopCounts sum;
    for (int64_t layer = 0; layer < m.layers; ++layer) {
      const FlopCounts one = count_layer_flops(m, layer, AttentionFlops::causal);
      sum.dense_gemms += one.dense_gemms;
      sum.attention_core += one.attention_core;
      sum.routed_experts += one.routed_experts;
      CHECK(one.logits == 0);
    }
    INFO(name);
    CHECK(sum.dense_gemms == Approx(whole.dense_gemms).epsilon(1e-12));
    CHECK(sum.routed_experts == Approx(whole.routed_experts).epsilon(1e-12));
  }
  // DeepSeek-V3's first three layers are dense: no routed experts there.
  const ModelSpec& v3 = shipped_model_catalog().get("deepseek-v3", "t", "m");
  CHECK(count_layer_flops(v3, 2, AttentionFlops::causal).routed_experts == 0);
  CHECK(count_layer_flops(v3, 3, AttentionFlops::causal).routed_experts > 0);
  CHECK(mla_up_projection_forward_flops(v3) > 0);
  CHECK(mla_up_projection_forward_flops(shipped_model_catalog().get("llama3-8b", "t", "m")) == 0);
}
