// The one max-min solver: textbook allocations (Bertsekas & Gallager §6.5.2), weights, caps,
// duplicate uses, and reuse of one solver across problems.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "simrun/sim/network/max_min.hpp"

using namespace simrun;

TEST_CASE("max-min: the textbook line network", "[sim][network][max_min]") {
  // Links A (cap 1) and B (cap 1); flow 0 crosses both, flow 1 only A, flows 2 and 3 only B.
  // B is the bottleneck at 1/3 for flows 0, 2, 3; flow 1 takes what A has left: 2/3.
  MaxMinSolver s;
  const uint32_t a = s.add_link(1.0), b = s.add_link(1.0);
  const double inf = std::numeric_limits<double>::infinity();
  s.add_flow(inf);
  s.add_use(a, 1.0);
  s.add_use(b, 1.0);
  s.add_flow(inf);
  s.add_use(a, 1.0);
  s.add_flow(inf);
  s.add_use(b, 1.0);
  s.add_flow(inf);
  s.add_use(b, 1.0);
  const std::vector<double>& r = s.solve();
  REQUIRE(r.size() == 4);
  CHECK(r[0] == Approx(1.0 / 3));
  CHECK(r[1] == Approx(2.0 / 3));
  CHECK(r[2] == Approx(1.0 / 3));
  CHECK(r[3] == Approx(1.0 / 3));
}

TEST_CASE("max-min: weights, caps and duplicate uses", "[sim][network][max_min]") {
  MaxMinSolver s;
  const uint32_t l = s.add_link(12.0);
  s.add_flow(std::numeric_limits<double>::infinity());
  s.add_use(l, 1.0);
  s.add_use(l, 1.0);  // listed twice: weight 2 on the link
  s.add_flow(2.0);    // capped below its fair share
  s.add_use(l, 1.0);
  s.add_flow(std::numeric_limits<double>::infinity());  // on no link: its cap, +inf
  const std::vector<double>& r = s.solve();
  CHECK(r[1] == Approx(2.0));
  CHECK(r[0] == Approx(5.0));  // (12 - 2) / weight 2
  CHECK(std::isinf(r[2]));

  // The same solver, cleared, solves the next problem from scratch.
  s.clear();
  const uint32_t m = s.add_link(3.0);
  s.add_flow(std::numeric_limits<double>::infinity());
  s.add_use(m, 1.0);
  const std::vector<double>& again = s.solve();
  REQUIRE(again.size() == 1);
  CHECK(again[0] == Approx(3.0));
}
