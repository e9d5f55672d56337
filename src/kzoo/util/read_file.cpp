#include "kzoo/util/read_file.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

namespace kzoo::util {

Result<std::string> read_file_capped(const std::string& path, std::size_t cap) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail("cannot read " + path + ": " + std::strerror(errno));
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (s.size() > cap) return fail(path + " is larger than " + std::to_string(cap) + " bytes");
  return s;
}

}  // namespace kzoo::util
