# SPDX-License-Identifier: Apache-2.0
# precompile.cmake — the build's `blocktune precompile` of the shipped wisdom (CMakeLists.txt,
# BT_PRECOMPILE; docs/wisdom.md#precompiled-binaries), run with cmake -P:
#   -DBT=<blocktune> -DOUT=<folder> -DWISDOM=<folder> -DCACHE=<cache dir> -DSTAMP=<file>
#   -DSTRICT=ON|OFF
# STRICT (our dev and CI builds): an entry that fails to compile fails the build; otherwise a
# warning, and the build goes on (first launches of those configs compile them).
set(ENV{BLOCKTUNE_CACHE_DIR} "${CACHE}")
execute_process(COMMAND "${BT}" precompile --out "${OUT}" --prune "${WISDOM}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  if(STRICT)
    message(FATAL_ERROR "blocktune precompile failed (exit status ${rc})")
  endif()
  message(WARNING "blocktune precompile failed (exit status ${rc}): first launches of the "
                  "configs it could not build will compile them")
endif()
file(TOUCH "${STAMP}")
