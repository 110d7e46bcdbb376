# `cmake --install build [--prefix P] --strip` and `cpack` (a .deb): the binary, the bundled data
# under share/epochcast (found from the binary: src/core/data_dir.cpp) and a bash completion
# script the binary writes itself. docs/install.md.
include(GNUInstallDirs)

install(TARGETS epochcast RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# Everything in data/: the dataset, GPU and price catalogs, validation figures and their notes.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/data/ DESTINATION ${CMAKE_INSTALL_DATADIR}/epochcast)

# The completion script comes from the command tree (`epochcast completion bash`), so it cannot
# list an option the binary lacks.
set(EPOCHCAST_COMPLETION ${PROJECT_BINARY_DIR}/epochcast.bash-completion)
add_custom_command(OUTPUT ${EPOCHCAST_COMPLETION}
                   COMMAND epochcast completion bash > ${EPOCHCAST_COMPLETION}
                   DEPENDS epochcast
                   COMMENT "Writing the bash completion script")
add_custom_target(epochcast_completion ALL DEPENDS ${EPOCHCAST_COMPLETION})
install(FILES ${EPOCHCAST_COMPLETION} DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
        RENAME epochcast)
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME epochcast)
set(CPACK_PACKAGE_VENDOR "epochcast")
set(CPACK_PACKAGE_CONTACT "epochcast maintainers <epochcast@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "predict training-epoch time on other GPUs from hardware metric logs")
set(CPACK_PACKAGE_INSTALL_DIRECTORY epochcast)
set(CPACK_STRIP_FILES ON)                 # 110 MB with debug info; the package carries none
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)   # epochcast_0.1.0_amd64.deb
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)    # Depends: from the libraries the binary links (dpkg-shlibdeps)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
include(CPack)
