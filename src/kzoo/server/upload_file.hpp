// An upload being received: bytes streamed into a temporary file in the
// uploads directory, hashed (SHA-256) on the way, capped, and only made
// visible under its final name once complete and on disk.
//
// Crash safety: the temporary file is named ".incoming-<owner>-*" (the
// receiving server's id) and nothing ever reads such a file as an upload; commit() fsyncs the file, renames it to its
// final name and fsyncs the directory, so a final name always holds a whole
// upload. A server killed mid-upload leaves only an ".incoming-*" file, which
// remove_incoming() deletes at its next start (its own only, where several
// servers share the directory). An UploadFile destroyed
// without commit() unlinks its temporary file.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "kzoo/util/result.hpp"

namespace kzoo::server {

inline constexpr std::string_view kIncomingPrefix = ".incoming-";

class UploadFile {
 public:
  // Creates "<dir>/.incoming-<owner>-XXXXXX" (mode 0600, O_EXCL). `cap` bounds the bytes.
  static Result<UploadFile> create(const std::string& dir, std::uint64_t cap, const std::string& owner);

  UploadFile(UploadFile&&) noexcept;
  UploadFile& operator=(UploadFile&&) noexcept;
  ~UploadFile();

  // Appends bytes; fails (without writing) once the total would pass the cap.
  Result<void> write(std::string_view bytes);
  bool over_cap() const;

  std::uint64_t size() const;
  const std::string& temp_path() const;

  // Flushes to disk and closes; returns the SHA-256 (64 lowercase hex digits).
  // After this the file can be read at temp_path().
  Result<std::string> finish();

  // Renames the finished file to "<dir>/<name>" (which must not exist) and
  // fsyncs the directory. Returns the final path.
  Result<std::string> commit(const std::string& name);

 private:
  struct Impl;
  explicit UploadFile(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Deletes the ".incoming-<owner>-*" files in `dir` (every ".incoming-*" file
// when `owner` is empty); returns how many.
Result<int> remove_incoming(const std::string& dir, const std::string& owner = "");

// SHA-256 of bytes, lowercase hex (for tests and the client).
std::string sha256_hex(std::string_view bytes);

}  // namespace kzoo::server
