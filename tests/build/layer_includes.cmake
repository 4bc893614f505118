# build.layer_includes: the layer rule is enforced by include paths. Each
# probe is a one-line source placed in a layer's directory of a scratch tree
# that includes one header; it is compiled with exactly the include
# directories CMake gives that layer's target (-D<LAYER>_INC, '|'-separated),
# and must compile (ok) or fail because the header is not found (missing).
# The controls (ok) show that a failure is the rule, not a broken probe.
#   -DCXX=compiler -DWORK=scratch dir -DFS_INC=... -DHW_INC=... ...
set(probes
  # fs/ sees the contract hw/arch.h, schemata's header and itself; no
  # x86 code, no simulator, no backend factory, nothing of the daemon.
  "FS|hw/x86/registers.h|missing"
  "FS|hw/x86/arch_x86.h|missing"
  "FS|hw/sim/profile.h|missing"
  "FS|hw/backend.h|missing"
  "FS|hw/x86/device.h|missing"
  "FS|daemon/daemon.h|missing"
  "FS|hw/arch.h|ok"
  "FS|schemata/schemata.h|ok"
  "FS|fs/filesystem.h|ok"
  # schemata/ sees base/ only.
  "SCHEMATA|hw/arch.h|missing"
  "SCHEMATA|fs/filesystem.h|missing"
  "SCHEMATA|schemata/schemata.h|ok"
  # hw/ never sees libfuse, fs/ or schemata/; its x86 part no simulator.
  "HW|<fuse_lowlevel.h>|missing"
  "HW|fs/filesystem.h|missing"
  "HW|schemata/schemata.h|missing"
  "HW|hw/sim/machine.h|missing"
  "HW|hw/x86/arch_x86.h|ok"
  # The broker sees no simulator.
  "MSRD|hw/sim/machine.h|missing"
  "MSRD|hw/broker/server.h|ok"
  # The daemon sees fs/'s public headers, not its insides nor any
  # architecture's code: platforms through the factory.
  "DAEMON|fs/impl.h|missing"
  "DAEMON|hw/x86/registers.h|missing"
  "DAEMON|hw/x86/platform.h|missing"
  "DAEMON|hw/sim/machine.h|missing"
  "DAEMON|fs/filesystem.h|ok"
  "DAEMON|hw/backend.h|ok"
  "DAEMON|hw/platform_factory.h|ok"
  # The sandbox likewise.
  "SANDBOX|hw/x86/platform.h|missing"
  "SANDBOX|hw/sim/profile.h|missing"
  "SANDBOX|hw/platform_factory.h|ok"
  # The exporter reads files: base/ and itself only.
  "EXPORTER|fs/filesystem.h|missing"
  "EXPORTER|hw/arch.h|missing"
  "EXPORTER|exporter/tree.h|ok")

set(lower_FS fs)
set(lower_SCHEMATA schemata)
set(lower_HW hw/x86)
set(lower_MSRD hw/broker)
set(lower_DAEMON daemon)
set(lower_SANDBOX sandbox)
set(lower_EXPORTER exporter)

file(REMOVE_RECURSE ${WORK})
set(failures 0)
set(n 0)
foreach(p ${probes})
  string(REPLACE "|" ";" f "${p}")
  list(GET f 0 layer)
  list(GET f 1 header)
  list(GET f 2 expect)
  math(EXPR n "${n} + 1")
  set(src ${WORK}/${lower_${layer}}/probe_${n}.cc)
  if(header MATCHES "^<")
    file(WRITE ${src} "#include ${header}\n")
    string(REGEX REPLACE "^<(.*)>$" "\\1" bare "${header}")
  else()
    file(WRITE ${src} "#include \"${header}\"\n")
    set(bare "${header}")
  endif()
  string(REPLACE "|" ";" incs "${${layer}_INC}")
  set(flags)
  foreach(d ${incs})
    list(APPEND flags "-I${d}")
  endforeach()
  execute_process(COMMAND ${CXX} -std=c++20 -fsyntax-only ${flags} ${src}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  string(REPLACE "." "\\." bare_re "${bare}")
  if(expect STREQUAL "ok" AND rc EQUAL 0)
    message("ok: ${layer} includes ${header}")
  elseif(expect STREQUAL "missing" AND NOT rc EQUAL 0 AND
         out MATCHES "${bare_re}: No such file|'${bare_re}' file not found")
    message("ok: ${layer} cannot include ${header}")
  else()
    message("FAIL: ${layer} including ${header}: expected ${expect}, got exit ${rc}:\n${out}")
    math(EXPR failures "${failures} + 1")
  endif()
endforeach()
if(failures GREATER 0)
  message(FATAL_ERROR "${failures} of ${n} include probes broke the layer rule")
endif()
message("${n} include probes kept the layer rule")
