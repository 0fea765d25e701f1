# Installation (`cmake --install`) and the Debian package (`cpack -G DEB`).
#
# Layout, under the prefix given when installing (`cmake --install BUILD --prefix P`, else the
# configured CMAKE_INSTALL_PREFIX; the package uses /usr, so etc/ is /etc):
#   bin/weft, bin/weft-load
#   etc/weft/weft.toml             conf/weft.toml with the installed site, MIME map and pid file
#   share/weft/www/                the bundled site (www-fixtures/site)
#   share/weft/mime.types          conf/mime.types
#   share/man/man8/weft.8, share/man/man1/weft-load.1
#   lib/systemd/system/weft.service
# Every path is decided when installing, so an install under any prefix is whole: the
# configuration and the unit are written then (WeftInstallLayout.cmake), naming that prefix's
# files. weft finds etc/weft/weft.toml and share/weft/ next to its own binary
# (server/core/config.cpp), falling back to the paths of the configured prefix, so an installed weft
# runs with no arguments wherever it was installed.

install(TARGETS weft weft-load RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${PROJECT_SOURCE_DIR}/conf/mime.types DESTINATION ${CMAKE_INSTALL_DATADIR}/weft)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/www-fixtures/site/ DESTINATION ${CMAKE_INSTALL_DATADIR}/weft/www)
install(FILES ${PROJECT_SOURCE_DIR}/docs/man/weft.8 DESTINATION ${CMAKE_INSTALL_MANDIR}/man8)
install(FILES ${PROJECT_SOURCE_DIR}/docs/man/weft-load.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(CODE "
  set(WEFT_SOURCE_DIR \"${PROJECT_SOURCE_DIR}\")
  set(WEFT_BINARY_DIR \"${PROJECT_BINARY_DIR}\")
  set(WEFT_SYSCONFDIR_SETTING \"${CMAKE_INSTALL_SYSCONFDIR}\")
  set(WEFT_DATADIR_SETTING \"${CMAKE_INSTALL_DATADIR}\")
  set(WEFT_BINDIR_SETTING \"${CMAKE_INSTALL_BINDIR}\")
  include(\"${PROJECT_SOURCE_DIR}/cmake/WeftInstallLayout.cmake\")
")

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
    "liburing2 (>= 2.3), libspdlog1.10, libfmt9, libtomlplusplus3, libssl3, libzstd1, libbrotli1, zlib1g, libstdc++6, libgcc-s1, adduser")
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
