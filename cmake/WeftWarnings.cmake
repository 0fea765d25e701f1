# Strict warnings for weft's own targets; third-party sources (llhttp) do not use this.
add_library(weft_warnings INTERFACE)
target_compile_options(weft_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast -Wcast-align
  -Wunused -Woverloaded-virtual -Wdouble-promotion -Wformat=2
  -Wimplicit-fallthrough -Wmissing-declarations)
if(WEFT_WERROR)
  target_compile_options(weft_warnings INTERFACE -Werror)
endif()
