# Runs at install time (install(CODE) in WeftInstall.cmake), when CMAKE_INSTALL_PREFIX is the
# prefix being installed to (`cmake --install BUILD --prefix P`), not the one the build was
# configured with. Installs etc/weft/weft.toml for that prefix, naming that prefix's share/weft,
# and the systemd unit naming that prefix's bin/weft, so an install under any prefix is whole.
#
# The configuration folder follows GNUInstallDirs' rule, which weft's own lookup follows too
# (installed_config_dir in server/core/config.cpp): /etc/weft for the /usr prefix, /etc/opt/X/weft
# for /opt/X, else PREFIX/etc/weft; an absolute CMAKE_INSTALL_SYSCONFDIR is taken as it is.
#
# Expects: WEFT_SOURCE_DIR, WEFT_BINARY_DIR, WEFT_SYSCONFDIR_SETTING, WEFT_DATADIR_SETTING and
# WEFT_BINDIR_SETTING (the CMAKE_INSTALL_* values of the build, usually etc, share and bin).

function(weft_install_dir out setting)
  if(IS_ABSOLUTE "${setting}")
    set(${out} "${setting}" PARENT_SCOPE)
  else()
    set(${out} "${CMAKE_INSTALL_PREFIX}/${setting}" PARENT_SCOPE)
  endif()
endfunction()

set(prefix "${CMAKE_INSTALL_PREFIX}")
string(REGEX REPLACE "(.)/+$" "\\1" prefix "${prefix}")  # "/usr/" is "/usr"
if(IS_ABSOLUTE "${WEFT_SYSCONFDIR_SETTING}")
  set(weft_etc "${WEFT_SYSCONFDIR_SETTING}/weft")
elseif(WEFT_SYSCONFDIR_SETTING STREQUAL "etc" AND prefix STREQUAL "/usr")
  set(weft_etc "/etc/weft")
elseif(WEFT_SYSCONFDIR_SETTING STREQUAL "etc" AND prefix MATCHES "^/opt/(.+)$")
  set(weft_etc "/etc/opt/${CMAKE_MATCH_1}/weft")
else()
  set(weft_etc "${prefix}/${WEFT_SYSCONFDIR_SETTING}/weft")
endif()
weft_install_dir(weft_data "${WEFT_DATADIR_SETTING}")
set(weft_data "${weft_data}/weft")
weft_install_dir(weft_bin "${WEFT_BINDIR_SETTING}")

# The shipped configuration with its three paths pointed at the installed files; every other
# value stays as documented in conf/weft.toml.
file(READ "${WEFT_SOURCE_DIR}/conf/weft.toml" weft_toml)
foreach(rule
    "root = \"[^\"]*\"|root = \"${weft_data}/www\""
    "mime_types = \"[^\"]*\"|mime_types = \"${weft_data}/mime.types\""
    "pid_file = \"[^\"]*\"|pid_file = \"/run/weft/weft.pid\"")
  string(REPLACE "|" ";" parts "${rule}")
  list(GET parts 0 from)
  list(GET parts 1 to)
  string(REGEX MATCH "\n${from}\n" found "${weft_toml}")
  if(NOT found)
    message(FATAL_ERROR "conf/weft.toml has no line matching '${from}' to install")
  endif()
  string(REGEX REPLACE "\n${from}\n" "\n${to}\n" weft_toml "${weft_toml}")
endforeach()
file(WRITE "${WEFT_BINARY_DIR}/install/weft.toml" "${weft_toml}")
# file(INSTALL) puts DESTDIR in front and lists the file in install_manifest.txt, as install().
file(INSTALL DESTINATION "${weft_etc}" TYPE FILE FILES "${WEFT_BINARY_DIR}/install/weft.toml")

file(READ "${WEFT_SOURCE_DIR}/deploy/systemd/weft.service" weft_unit)
string(REPLACE "/usr/bin/weft" "${weft_bin}/weft" weft_unit "${weft_unit}")
string(REPLACE "/etc/weft/weft.toml" "${weft_etc}/weft.toml" weft_unit "${weft_unit}")
file(WRITE "${WEFT_BINARY_DIR}/install/weft.service" "${weft_unit}")
file(INSTALL DESTINATION "${prefix}/lib/systemd/system" TYPE FILE
     FILES "${WEFT_BINARY_DIR}/install/weft.service")
