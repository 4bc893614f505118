// Catch2 main for the reliability unit tests.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
