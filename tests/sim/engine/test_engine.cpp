// The discrete-event engine: (time, seq) order, cancellation, invariants, determinism.
#include <catch2/catch.hpp>
#include <random>
#include <vector>

#include "simrun/common/error.hpp"
#include "simrun/sim/engine/engine.hpp"

using namespace simrun;

TEST_CASE("events run in (time, insertion) order", "[sim][engine]") {
  Engine e;
  std::vector<int> order;
  e.schedule_at(TimeNs{30}, [&] { order.push_back(3); });
  e.schedule_at(TimeNs{10}, [&] { order.push_back(1); });
  e.schedule_at(TimeNs{20}, [&] { order.push_back(2); });
  e.schedule_at(TimeNs{10}, [&] { order.push_back(11); });  // same time: after the first 10
  e.run();
  CHECK(order == std::vector<int>{1, 11, 2, 3});
  CHECK(e.now() == TimeNs{30});
  CHECK(e.events_processed() == 4);
}

TEST_CASE("events scheduled from callbacks at the current time run after those already queued",
          "[sim][engine]") {
  Engine e;
  std::vector<int> order;
  e.schedule_at(TimeNs{5}, [&] {
    order.push_back(1);
    e.schedule_in(TimeNs{0}, [&] { order.push_back(3); });
  });
  e.schedule_at(TimeNs{5}, [&] { order.push_back(2); });
  e.run();
  CHECK(order == std::vector<int>{1, 2, 3});
}

TEST_CASE("cancelled events never run and are accounted for", "[sim][engine]") {
  Engine e;
  int ran = 0;
  const EventId a = e.schedule_at(TimeNs{10}, [&] { ran += 1; });
  const EventId b = e.schedule_at(TimeNs{20}, [&] { ran += 10; });
  CHECK(e.is_pending(a));
  CHECK(e.cancel(a));
  CHECK_FALSE(e.cancel(a));  // twice
  CHECK_FALSE(e.is_pending(a));
  e.run();
  CHECK(ran == 10);
  CHECK_FALSE(e.cancel(b));  // already ran
  CHECK(e.events_scheduled() == 2);
  CHECK(e.events_processed() == 1);
  CHECK(e.events_cancelled() == 1);
  CHECK(e.events_pending() == 0);
}

TEST_CASE("a recycled slot does not let an old handle cancel a new event", "[sim][engine]") {
  Engine e;
  const EventId a = e.schedule_at(TimeNs{1}, [] {});
  e.run();
  int ran = 0;
  const EventId b = e.schedule_at(TimeNs{2}, [&] { ++ran; });
  CHECK(a.slot == b.slot);
  CHECK_FALSE(e.cancel(a));
  e.run();
  CHECK(ran == 1);
}

TEST_CASE("scheduling in the past is an invariant violation", "[sim][engine]") {
  Engine e;
  e.schedule_at(TimeNs{100}, [] {});
  e.run();
  CHECK_THROWS_AS(e.schedule_at(TimeNs{50}, [] {}), InternalError);
}

TEST_CASE("run_until stops at the limit and keeps later events", "[sim][engine]") {
  Engine e;
  int ran = 0;
  e.schedule_at(TimeNs{10}, [&] { ++ran; });
  const EventId late = e.schedule_at(TimeNs{100}, [&] { ran += 100; });
  const EventId gone = e.schedule_at(TimeNs{20}, [&] { ran += 1000; });
  e.cancel(gone);
  e.run_until(TimeNs{50});
  CHECK(ran == 1);
  CHECK(e.now() == TimeNs{50});
  CHECK(e.is_pending(late));
  e.run();
  CHECK(ran == 101);
}

TEST_CASE("random schedules: time is monotone, nothing lost, identical logs", "[sim][engine]") {
  auto run_once = [](uint32_t seed) {
    Engine e;
    std::vector<Engine::LogEntry> log;
    e.set_log(&log);
    std::mt19937 rng(seed);
    std::vector<EventId> ids;
    int64_t last = -1;
    bool monotone = true;
    std::function<void(int)> spawn = [&](int depth) {
      const int64_t t = e.now().ns;
      monotone = monotone && t >= last;
      last = t;
      if (depth == 0) return;
      for (int i = 0; i < 3; ++i) {
        ids.push_back(e.schedule_in(
            TimeNs{int64_t(rng() % 50)}, [&spawn, depth] { spawn(depth - 1); }, uint32_t(depth)));
      }
      if (rng() % 4 == 0 && !ids.empty()) e.cancel(ids[rng() % ids.size()]);
    };
    e.schedule_at(TimeNs{0}, [&] { spawn(6); });
    e.run();
    CHECK(monotone);
    CHECK(e.events_scheduled() == e.events_processed() + e.events_cancelled());
    CHECK(log.size() == e.events_processed());
    return log;
  };
  const auto a = run_once(7), b = run_once(7);
  CHECK(a.size() > 100);
  CHECK(a == b);
}

TEST_CASE("two engines are independent (no globals)", "[sim][engine]") {
  Engine a, b;
  int x = 0, y = 0;
  a.schedule_at(TimeNs{5}, [&] { ++x; });
  b.schedule_at(TimeNs{7}, [&] { ++y; });
  a.run();
  CHECK(x == 1);
  CHECK(y == 0);
  CHECK(b.events_pending() == 1);
  b.run();
  CHECK(b.now() == TimeNs{7});
  CHECK(a.now() == TimeNs{5});
}
