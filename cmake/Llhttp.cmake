# llhttp: Debian ships only its C sources (package node-llhttp); build them as a static
# library. There is no libllhttp-dev in bookworm.
find_path(LLHTTP_SOURCE_DIR llhttp.c api.c http.c
  PATHS /usr/share/llhttp NO_DEFAULT_PATH)
find_path(LLHTTP_INCLUDE_DIR llhttp.h
  PATHS /usr/share/include/llhttp /usr/include/llhttp /usr/include NO_DEFAULT_PATH)
if(NOT LLHTTP_SOURCE_DIR OR NOT LLHTTP_INCLUDE_DIR)
  message(FATAL_ERROR
    "llhttp sources not found (looked for /usr/share/llhttp/llhttp.c and "
    "/usr/share/include/llhttp/llhttp.h). Install Debian's 'node-llhttp' package: "
    "scripts/setup.sh does, or run: apt-get install node-llhttp")
endif()
add_library(llhttp STATIC
  ${LLHTTP_SOURCE_DIR}/llhttp.c ${LLHTTP_SOURCE_DIR}/api.c ${LLHTTP_SOURCE_DIR}/http.c)
target_include_directories(llhttp SYSTEM PUBLIC ${LLHTTP_INCLUDE_DIR})
set_target_properties(llhttp PROPERTIES C_STANDARD 99 POSITION_INDEPENDENT_CODE ON)
target_compile_options(llhttp PRIVATE -w)
# Strict mode: llhttp 8.1 otherwise takes any byte after a CR as its LF ("\r\n\rX" ends a
# head), a smuggling vector; see server/http/request_parser.hpp.
target_compile_definitions(llhttp PUBLIC LLHTTP_STRICT_MODE=1)
