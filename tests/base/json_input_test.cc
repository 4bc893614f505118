// Tests base/json_input.h, the one way outside JSON is read: parse_json()
// refuses garbage, truncation, non-UTF-8 and deep nesting without throwing;
// JsonIn refuses wrong types, missing keys and out-of-range numbers with the
// value's path in the message.
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>

#include "base/json_input.h"

using resctrlfs::JsonIn;
using resctrlfs::kMaxJsonDepth;
using resctrlfs::parse_json;

namespace {

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("parse_json refuses what is not a JSON document, without throwing", "[json_input]") {
  const std::string bad[] = {
      "",
      "\x0c{\"version\":\"clos:\"}",  // the input that once aborted the daemon is also bad JSON
      "{\"version\":1",               // truncated
      "{\"a\":\"\xff\xfe\"}",         // a string that is not UTF-8
      "{\"a\":\"\xc3\"}",             // a UTF-8 sequence cut short
      std::string("\x00\x01\x02\x03\x7f\x80", 6),
      "{\"n\":1e999}",  // overflows a double
      "{} {}",
      "[1,2,]",
  };
  for (const std::string& text : bad) {
    INFO(text);
    auto r = parse_json(text);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == EINVAL);
    CHECK_FALSE(r.error().message.empty());
    CHECK_FALSE(has(r.error().message, "[json.exception"));
  }
  CHECK(parse_json("{\"version\":\"clos:\"}").ok());  // without the form feed it is JSON
  CHECK(parse_json(" \n{\"a\":[1,{\"b\":null}]}\n").ok());
}

TEST_CASE("parse_json refuses deep nesting before the parser sees it", "[json_input]") {
  // 100000 levels: dump() or a copy of such a value would overflow the stack.
  for (const std::string& open : {std::string("["), std::string("{\"a\":")}) {
    std::string deep;
    for (int i = 0; i < 100000; ++i) deep += open;
    auto r = parse_json(deep);
    REQUIRE_FALSE(r.ok());
    CHECK(has(r.error().message, "nested deeper than 64 levels"));
  }
  std::string ok(kMaxJsonDepth, '[');
  ok += std::string(kMaxJsonDepth, ']');
  CHECK(parse_json(ok).ok());
  CHECK_FALSE(parse_json("[" + ok + "]").ok());
  // Brackets inside strings (escaped quotes included) do not nest.
  std::string in_string = "[\"" + std::string(1000, '[') + "\\\"" + std::string(1000, '{') + "\"]";
  CHECK(parse_json(in_string).ok());
  CHECK(parse_json(in_string, 1).ok());
  CHECK_FALSE(parse_json("[[1]]", 1).ok());
}

TEST_CASE("JsonIn refuses wrong types, missing keys and out-of-range numbers", "[json_input]") {
  auto doc = parse_json(R"({"version": "clos:", "n": 5, "neg": -1, "big": 18446744073709551615,
                            "huge": 1e300, "f": 1.5, "b": true, "s": "text", "o": {"k": [1, "x"]},
                            "a": [0, 4294967295, 4294967296], "weird key": null})");
  REQUIRE(doc.ok());
  const JsonIn j(*doc);

  auto v = j.int_or<int>("version", 0);  // json::value() threw here
  REQUIRE_FALSE(v.ok());
  CHECK(v.error().message ==
        "$.version: must be an integer in -2147483648..2147483647, not a string");
  CHECK(*j.int_or<int>("absent", 7) == 7);
  CHECK(*j.int_at<uint32_t>("n") == 5);
  CHECK(j.int_at<uint32_t>("missing").error().message == "$: lacks \"missing\"");
  CHECK(j.int_at<uint32_t>("neg").error().message ==
        "$.neg: must be an integer in 0..4294967295, not -1");
  CHECK_FALSE(j.int_at<uint32_t>("big").ok());
  CHECK(*j.int_at<uint64_t>("big") == UINT64_MAX);
  CHECK_FALSE(j.int_at<int64_t>("big").ok());
  CHECK_FALSE(j.int_at<uint64_t>("huge").ok());  // a float is not an integer
  CHECK_FALSE(j.int_at<int>("f").ok());
  CHECK_FALSE(j.int_at<int>("b").ok());  // nor is a boolean
  CHECK(*j.int_at<int>("n", 0, 5) == 5);
  CHECK_FALSE(j.int_at<int>("n", 0, 4).ok());
  CHECK_FALSE(j.int_at<int>("n", 6, 9).ok());
  CHECK(*j.number_or("f", 0, 0, 2) == 1.5);
  CHECK(*j.number_or("n", 0, 0, 10) == 5);
  CHECK_FALSE(j.number_or("huge", 0, 0, 1e9).ok());
  CHECK_FALSE(j.number_or("s", 0, 0, 1e9).ok());
  CHECK(*j.bool_at("b"));
  CHECK(j.bool_or("n", false).error().message == "$.n: must be true or false, not 5");
  CHECK(*j.string_at("s") == "text");
  CHECK_FALSE(j.string_at("s", 3).ok());
  CHECK(j.string_at("o").error().message == "$.o: must be a string, not an object");
  CHECK(j.string_or("weird key", "").error().message ==
        "$[\"weird key\"]: must be a string, not null");

  auto k = j.get("o").value().get("k").value();
  CHECK(k.path() == "$.o.k");
  auto elems = k.elements();
  REQUIRE(elems.ok());
  REQUIRE(elems->size() == 2);
  CHECK((*elems)[1].path() == "$.o.k[1]");
  CHECK((*elems)[1].as_int<int>().error().message ==
        "$.o.k[1]: must be an integer in -2147483648..2147483647, not a string");
  CHECK_FALSE(k.elements(1).ok());
  CHECK(k.element(2).error().message == "$.o.k: lacks element 2");
  CHECK_FALSE(j.get("s").value().get("x").ok());  // member of a non-object
  CHECK_FALSE(j.get("s").value().elements().ok());
  CHECK(j.elements_or_none("absent")->empty());
  CHECK_FALSE(j.elements_or_none("o").ok());
  auto a = j.get("a").value().elements().value();
  CHECK(*a[1].as_int<uint32_t>() == UINT32_MAX);
  CHECK_FALSE(a[2].as_int<uint32_t>().ok());
  auto members = j.get("o").value().members();
  REQUIRE(members.ok());
  CHECK(members->at(0).first == "k");
  CHECK_FALSE(j.get("a").value().members().ok());
}
