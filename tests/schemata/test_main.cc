// Defines the Catch2 main() for the schemata unit tests.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
