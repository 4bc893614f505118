// Defines ConfType: which half of a cache resource split by Code and Data
// Prioritization (CDP) a configuration refers to. Both the schemata
// language (a schema line is L3CODE, L3DATA or plain L3) and the hardware
// contract (a control value is for CODE, DATA or the whole CLOSID) speak of
// it, so it lives below both, as the kernel's enum resctrl_conf_type lives
// in include/linux/resctrl_types.h.
#pragma once

#include <cstdint>

namespace resctrlfs {

// NONE is used for every resource when CDP is off, and always for the
// bandwidth resources.
enum class ConfType : uint8_t { NONE = 0, CODE = 1, DATA = 2 };

}  // namespace resctrlfs
