// Where the dynamic linker binds the C++ runtime's symbols in an executable that links torch.
// PyTorch's wheels export the parts of libstdc++ they linked statically (std::filesystem among them).
// An executable whose lookup order reaches libtorch.so before libstdc++.so binds std::filesystem to
// torch's copy; on a GPU node (Ubuntu 24.04, g++ 13, ld 2.42) that copy crashed inside
// std::filesystem::remove_all, in a temporary folder's destructor. cmake/MedsegDeps.cmake orders the
// link; this test asks the dynamic linker (dlsym on the global scope, dladdr for the object that
// defines the symbol), not medseg's own code.
#include <dlfcn.h>

#include <gtest/gtest.h>

#include <string>

namespace {

std::string defining_object(const char* mangled) {
  void* sym = dlsym(RTLD_DEFAULT, mangled);
  if (sym == nullptr) return "(not found)";
  Dl_info info{};
  if (dladdr(sym, &info) == 0 || info.dli_fname == nullptr) return "(no object)";
  return info.dli_fname;
}

}  // namespace

TEST(LinkOrder, StdFilesystemBindsToTheSystemLibstdcxx) {
  // std::filesystem::remove_all(const path&) and remove_all(const path&, error_code&)
  for (const char* sym : {"_ZNSt10filesystem10remove_allERKNS_7__cxx114pathE",
                          "_ZNSt10filesystem10remove_allERKNS_7__cxx114pathERSt10error_code"}) {
    const std::string object = defining_object(sym);
    EXPECT_NE(object.find("libstdc++"), std::string::npos)
        << sym << " binds to " << object << ", not to libstdc++: the link puts torch before libstdc++";
  }
}
