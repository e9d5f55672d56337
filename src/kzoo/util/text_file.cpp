#include "kzoo/util/text_file.hpp"

#include <filesystem>
#include <fstream>
#include <system_error>

namespace kzoo {

namespace fs = std::filesystem;

Result<std::string> read_text_file(const std::string& path, std::size_t max_bytes) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return fail("cannot read \"" + path + "\": no such file");
  if (!fs::is_regular_file(path, ec)) return fail("cannot read \"" + path + "\": not a regular file");
  auto size = fs::file_size(path, ec);
  if (ec) return fail("cannot read \"" + path + "\": " + ec.message());
  if (size > max_bytes) {
    return fail("\"" + path + "\" is " + std::to_string(size) + " bytes, more than the " + std::to_string(max_bytes) +
                " this command reads");
  }
  std::ifstream f(path, std::ios::binary);
  if (!f) return fail("cannot open \"" + path + "\"");
  std::string data(static_cast<std::size_t>(size), '\0');
  f.read(data.data(), static_cast<std::streamsize>(size));
  if (f.gcount() != static_cast<std::streamsize>(size)) return fail("cannot read \"" + path + "\": short read");
  return data;
}

}  // namespace kzoo
