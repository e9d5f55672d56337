// Streaming a multipart upload's fields and file (upload_form.hpp).
#include "kzoo/server/upload_form.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "kzoo/package/tarball.hpp"

namespace kzoo::server {

std::variant<UploadForm, FormRefusal> read_upload_form(const httplib::ContentReader& reader, const FormSpec& spec) {
  UploadForm form;
  std::string current;
  bool in_file = false;
  std::optional<FormRefusal> refusal;
  auto allowed = [&](const std::string& name) {
    return std::find(spec.fields.begin(), spec.fields.end(), name) != spec.fields.end();
  };
  bool read_ok = reader(
      [&](const httplib::MultipartFormData& part) {
        if (refusal) return false;
        if (!part.filename.empty()) {
          if (form.file) {
            refusal = FormRefusal{400, "duplicate_file",
                                  fmt::format("the request has two file parts: send exactly one {}", spec.file_noun),
                                  part.name};
            return false;
          }
          auto f = UploadFile::create(spec.uploads_dir, spec.file_cap, spec.owner);
          if (!f) {
            refusal = FormRefusal{500, "storage", f.error().message, ""};
            return false;
          }
          form.file.emplace(std::move(*f));
          in_file = true;
          return true;
        }
        in_file = false;
        current = part.name;
        if (!allowed(current)) {
          refusal = FormRefusal{400, "unknown_field",
                                fmt::format("unknown form field \"{}\": {}", package::detail::printable(current),
                                            spec.fields_hint),
                                package::detail::printable(current)};
          return false;
        }
        if (form.fields.count(current)) {
          refusal = FormRefusal{400, "duplicate_field", fmt::format("form field \"{}\" is given twice", current), current};
          return false;
        }
        form.fields[current];
        return true;
      },
      [&](const char* data, std::size_t n) {
        if (std::chrono::steady_clock::now() > spec.deadline) {
          refusal = FormRefusal{408, "upload_timeout",
                                fmt::format("the upload took longer than {} s: send it faster or smaller",
                                            spec.deadline_s)};
          return false;
        }
        if (in_file) {
          if (auto w = form.file->write({data, n}); !w) {
            refusal = form.file->over_cap()
                          ? FormRefusal{413, "too_large",
                                        fmt::format("the {} file is over the cap of {} bytes: {}", spec.file_noun,
                                                    spec.file_cap, spec.over_cap_hint),
                                        spec.file_field}
                          : FormRefusal{500, "storage", w.error().message};
            return false;
          }
          return true;
        }
        auto& v = form.fields[current];
        if (v.size() + n > spec.field_cap) {
          refusal = FormRefusal{413, "field_too_large",
                                fmt::format("form field \"{}\" is over {} bytes", current, spec.field_cap), current};
          return false;
        }
        v.append(data, n);
        return true;
      });
  if (form.file && spec.on_file_bytes) spec.on_file_bytes(form.file->size());
  if (!read_ok || refusal)
    return refusal.value_or(FormRefusal{400, "bad_multipart",
                                        "the body is not complete, valid multipart/form-data (a boundary, parts with "
                                        "Content-Disposition: form-data, the closing boundary)"});
  return form;
}

}  // namespace kzoo::server
