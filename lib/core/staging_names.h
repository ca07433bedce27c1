#pragma once
// The hidden names under which medseg builds an output beside its target, and the sweep that
// removes those a killed process left: ".NAME.TAG.HOST.PID.RANDOM", where TAG is "tmp" (being
// built) or "old" (a replaced folder being deleted), HOST a hash of the host name and PID the
// process that made it. SIGINT and SIGTERM are cleaned up as they arrive (signal_cleanup.h);
// SIGKILL and power loss are not, so every StagedFolder and StagedFile first sweeps its folder.
#include <string>

namespace medseg {

// ".NAME.TAG.HOST.PID.RANDOM" in the folder of `target` (NAME: the target's file name).
std::string staging_sibling(const std::string& target, const std::string& tag);

// Removes, in `folder`, every staging name of this host whose process no longer exists (tags "tmp"
// and "old"), with everything in it. Names of other hosts (a results root on a network file system)
// and of live processes are kept. Returns how many it removed; never throws.
int remove_stale_staging(const std::string& folder);

}  // namespace medseg
