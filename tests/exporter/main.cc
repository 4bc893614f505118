// Catch2 main for the exporter/ unit tests.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
