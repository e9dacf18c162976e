# tests of the analytic area (tests/sim/test_*.cpp)
