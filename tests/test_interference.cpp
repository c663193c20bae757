// Compute/communication interference (docs/model.md sec 2.5): the compute speed lost while a collective
// runs on the GPU is fitted on the training corpus under a prior from published measurements.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "helpers.hpp"
#include "models/compute/compute_model.hpp"
#include "validation/training_corpus.hpp"

using namespace micsim;

namespace {

std::vector<CorpusRow> corpus() { return load_training_corpus(std::string(MICSIM_SOURCE_DIR) + "/validation/data/training-corpus"); }

std::vector<CorpusRow> corpus_without(const std::string& group) {
  std::vector<CorpusRow> out;
  for (const auto& r : corpus())
    if (r.source_group != group) out.push_back(r);
  return out;
}

}  // namespace

TEST_CASE("interference: the corpus fit stays inside the published measurements when a source is held out, and the catalog carries the fit") {
  // Published: 0.16 (Lee et al. 2025, arXiv 2507.03114: compute 18.9 % slower on average under
  // overlap) to 0.30 (Echo, arXiv 2412.12487: 1.38-1.48x). The rows alone barely determine it (they
  // trade it against jitter_cv): without the prior, holding IBM's 16 rows out took it to 0.458 and
  // IBM's held-out MAPE from 5.3 to 8.7 %. With the prior it stays inside the measured range.
  const CorpusConstants without_ibm = fit_corpus_constants(corpus_without("ibm"), CorpusConstants{}, 2);
  CHECK(without_ibm.interference > 0.16);
  CHECK(without_ibm.interference < 0.30);
  // On every row, the fit is what the compute defaults carry (to the digits written there).
  const CorpusConstants all = fit_corpus_constants(corpus(), CorpusConstants{}, 2);
  CHECK(all.interference == rel_approx(ComputeCalibration{}.interference).epsilon(0.005));
  CHECK(all.jitter_cv == rel_approx(ComputeCalibration{}.jitter_cv).epsilon(0.005));
}
