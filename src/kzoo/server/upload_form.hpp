// Reading a multipart/form-data upload as it streams: named text fields
// (each capped), exactly one file part streamed into an UploadFile in the
// uploads directory (capped, hashed), and a deadline for the whole body.
// Shared by the package upload (POST /api/submissions) and the batch job's
// submit directory (POST /api/batch), so both refuse the same framing the
// same way. The caller checks the fields' meaning.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "kzoo/server/upload_file.hpp"

namespace kzoo::server {

// Why a request was refused: its status, code, message and field.
struct FormRefusal {
  FormRefusal(int s, std::string c, std::string m, std::string f = "", nlohmann::json e = nullptr)
      : status(s), code(std::move(c)), message(std::move(m)), field(std::move(f)), extra(std::move(e)) {}
  int status;
  std::string code, message, field;
  nlohmann::json extra;
};

struct FormSpec {
  std::vector<std::string> fields;  // the text fields allowed
  std::string fields_hint;          // how the refusal of an unknown field lists them
  std::size_t field_cap = 16 * 1024;
  std::string file_noun = "package";  // "send exactly one <noun>"
  std::string file_field = "package"; // the field named when the file is over its cap or missing
  std::string over_cap_hint;          // what the over-cap refusal says to do
  std::uint64_t file_cap = 0;
  std::string uploads_dir, owner;  // where the file streams (UploadFile::create)
  std::chrono::steady_clock::time_point deadline;
  int deadline_s = 0;  // for the message
  // Told the file part's size once the body is read, refused or not (metrics).
  std::function<void(std::uint64_t)> on_file_bytes;
};

struct UploadForm {
  std::map<std::string, std::string> fields;
  std::optional<UploadFile> file;  // none when the request had no file part
};

// Reads the body; a refusal leaves the rest unread (close the connection).
std::variant<UploadForm, FormRefusal> read_upload_form(const httplib::ContentReader& reader, const FormSpec& spec);

}  // namespace kzoo::server
