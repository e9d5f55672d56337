#include "kzoo/runner/workdir.hpp"

#include <algorithm>
#include <set>

#include "kzoo/package/inspect.hpp"

namespace kzoo::runner {

Result<package::PackageTree> workdir_tree(const package::PackageTree& harness,
                                          const package::PackageTree& submission, std::string_view task_json) {
  package::PackageTree tree;
  for (const char* required : package::kRequiredFiles) {
    const package::PackageFile* f = harness.find(required);
    if (f == nullptr)
      return fail(std::string("the trusted harness has no ") + required +
                  ": the repository's package for this kernel is incomplete; restore the file there");
    tree.files.push_back(*f);
  }
  bool any_src = false;
  for (const auto& f : submission.files) {
    if (f.path.rfind("src/", 0) != 0) continue;  // only the source area crosses over
    tree.files.push_back(f);
    any_src = true;
  }
  if (!any_src)
    return fail("the submission has no file under src/: put the kernel's source there (see the kernel_package format)");
  tree.files.push_back({".kzoo/task.json", std::string(task_json)});

  std::sort(tree.files.begin(), tree.files.end(), [](auto& a, auto& b) { return a.path < b.path; });
  std::set<std::string> dirs{".kzoo/run"};  // its ancestor .kzoo comes from task.json
  for (const auto& f : tree.files)
    for (auto slash = f.path.find('/'); slash != std::string::npos; slash = f.path.find('/', slash + 1))
      dirs.insert(f.path.substr(0, slash));
  tree.dirs.assign(dirs.begin(), dirs.end());
  return tree;
}

Result<Workdir> lay_out_workdir(const std::string& fresh_dir, const package::PackageTree& harness,
                                const package::PackageTree& submission, std::string_view task_json) {
  auto tree = workdir_tree(harness, submission, task_json);
  if (!tree) return tl::unexpected(tree.error());
  if (auto w = package::write_tree(*tree, fresh_dir); !w)
    return fail("cannot lay out the workdir " + fresh_dir + ": " + w.error().message);
  return Workdir{fresh_dir, fresh_dir + "/.kernel_package", fresh_dir + "/src", fresh_dir + "/.kzoo/task.json",
                 fresh_dir + "/.kzoo/run"};  // workdir_at's, below
}

namespace {
Workdir workdir_at(const std::string& root) {
  return Workdir{root, root + "/.kernel_package", root + "/src", root + "/.kzoo/task.json", root + "/.kzoo/run"};
}
}  // namespace

Result<Workdir> make_workdir_skeleton(const std::string& fresh_dir) {
  package::PackageTree tree;
  tree.dirs = {".kernel_package", ".kzoo", ".kzoo/incumbent", ".kzoo/incumbent/src", ".kzoo/run", "src"};
  tree.files.push_back({".kzoo/task.json", ""});
  if (auto w = package::write_tree(tree, fresh_dir); !w)
    return fail("cannot lay out the workdir skeleton " + fresh_dir + ": " + w.error().message);
  return workdir_at(fresh_dir);
}

Result<Workdir> fill_workdir(const Workdir& skeleton, const package::PackageTree& harness,
                             const package::PackageTree& submission, std::string_view task_json) {
  auto tree = workdir_tree(harness, submission, task_json);
  if (!tree) return tl::unexpected(tree.error());
  if (auto w = package::write_tree_into(*tree, skeleton.root, {".kzoo/task.json"}); !w)
    return fail("cannot lay out the workdir " + skeleton.root + ": " + w.error().message);
  return workdir_at(skeleton.root);
}

}  // namespace kzoo::runner
