#pragma once
// Relative comparison for tests. doctest::Approx(v).epsilon(e) accepts |a - v| < e * (1 + max(|a|, |v|)):
// for values well below 1 (seconds, fractions, latencies) that is an absolute tolerance of e, so
// Approx(0.062).epsilon(0.10) accepted 0.084 (+34 %) and a bare Approx(6.6e-6) any latency under 18 us.
// rel_approx(v) compares relative to the larger value: |a - v| < e * max(|a|, |v|) (e defaults to
// doctest's 100 float epsilons, 1.2e-5); the scale of 1e-300 only lets an exact 0 equal 0 (doctest's
// comparison is strict). Every test compares through it (tests/test_hygiene.cpp checks).
#include <doctest/doctest.h>

inline doctest::Approx rel_approx(double v) { return doctest::Approx(v).scale(1e-300); }
