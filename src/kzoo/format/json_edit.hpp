// Editing a value inside JSON text without re-formatting the rest: a
// maintainer's task.json keeps its layout, key order and number spelling when
// `kzoo task calibrate --write` stores three fields (re-dumping the whole
// document turned 82 hand-laid lines into 136).
//
// The text is first parsed strictly (json_text.hpp); the edit then works on
// byte spans of that same text, so it never has to guess at malformed input.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kzoo/util/result.hpp"

namespace kzoo::format {

// Sets member `key` of the object reached from the root by the object keys
// `path` to `value`. Only that value's bytes change; an absent key is added
// after the object's last member, laid out like it (on its own line with the
// same indentation, or inline after ", "). Fails, naming `where` and the
// path, when the text is not one strict JSON document or `path` does not lead
// to an object.
Result<std::string> set_json_member(std::string_view text, const std::vector<std::string>& path, const std::string& key,
                                    const nlohmann::json& value, const std::string& where);

}  // namespace kzoo::format
