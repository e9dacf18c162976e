# tests of engine, network, collectives
