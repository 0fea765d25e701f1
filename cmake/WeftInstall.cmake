# Installation (`cmake --install`) and the Debian package (`cpack -G DEB`).
#
# Layout, under CMAKE_INSTALL_PREFIX (the package uses /usr, so etc/ is /etc):
#   bin/weft, bin/weft-load
#   etc/weft/weft.toml             conf/weft.toml with the installed site, MIME map and pid file
#   share/weft/www/                the bundled site (www-fixtures/site)
#   share/weft/mime.types          conf/mime.types
#   share/man/man8/weft.8, share/man/man1/weft-load.1
#   lib/systemd/system/weft.service
# weft itself looks for etc/weft/weft.toml and share/weft/ under the same prefix
# (server/CMakeLists.txt), so an installed weft runs with no arguments.

set(WEFT_CONF_DIR ${CMAKE_INSTALL_FULL_SYSCONFDIR}/weft)
set(WEFT_DATA_DIR ${CMAKE_INSTALL_FULL_DATADIR}/weft)

# The installed configuration: the shipped one, with its three paths pointed at the
# installed files. Every other value stays as documented in conf/weft.toml.
file(READ ${PROJECT_SOURCE_DIR}/conf/weft.toml weft_toml)
foreach(rule
    "root = \"[^\"]*\"|root = \"${WEFT_DATA_DIR}/www\""
    "mime_types = \"[^\"]*\"|mime_types = \"${WEFT_DATA_DIR}/mime.types\""
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
file(WRITE ${PROJECT_BINARY_DIR}/install/weft.toml "${weft_toml}")
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/conf/weft.toml)

install(TARGETS weft weft-load RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# FULL: with the /usr prefix GNUInstallDirs puts the configuration in /etc, not /usr/etc.
install(FILES ${PROJECT_BINARY_DIR}/install/weft.toml DESTINATION ${WEFT_CONF_DIR})
install(FILES ${PROJECT_SOURCE_DIR}/conf/mime.types DESTINATION ${CMAKE_INSTALL_DATADIR}/weft)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/www-fixtures/site/ DESTINATION ${CMAKE_INSTALL_DATADIR}/weft/www)
install(FILES ${PROJECT_SOURCE_DIR}/docs/man/weft.8 DESTINATION ${CMAKE_INSTALL_MANDIR}/man8)
install(FILES ${PROJECT_SOURCE_DIR}/docs/man/weft-load.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${PROJECT_SOURCE_DIR}/deploy/systemd/weft.service DESTINATION lib/systemd/system)

# The .deb: `cpack -G DEB` in a build folder (scripts/package.sh). The binaries link these
# Debian 12 libraries (ldd); the maintainer scripts add the weft system user and enable the
# unit the usual way; /etc/weft/weft.toml is a conffile, so an upgrade keeps local edits.
set(CPACK_PACKAGE_NAME weft)
set(CPACK_PACKAGE_VENDOR "weft")
set(CPACK_PACKAGE_CONTACT "weft maintainers <weft@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "static HTTP/1.1 file server on an M:N io_uring runtime")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION httpd)
set(CPACK_DEBIAN_PACKAGE_DEPENDS
    "liburing2 (>= 2.3), libspdlog1.10, libfmt9, libtomlplusplus3, libstdc++6, libgcc-s1, adduser")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "media-types")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/deploy/debian/conffiles
    ${PROJECT_SOURCE_DIR}/deploy/debian/postinst
    ${PROJECT_SOURCE_DIR}/deploy/debian/prerm
    ${PROJECT_SOURCE_DIR}/deploy/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_STRIP_FILES ON)  # the debug info stays in the build folder
set(CPACK_GENERATOR DEB)
include(CPack)
