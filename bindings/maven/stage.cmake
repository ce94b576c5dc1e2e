# Lays out the Maven project of org.disttrain:disttrain in the build tree
# (cmake -P): the Java sources, hand-written and SWIG-generated, under
# src/main/java, and the two native libraries under
# src/main/resources/org/disttrain/native/<platform>/ with an index that
# lists them in load order (NativeLibrary.java reads it).
#
#   -DSTAGE=<project dir> -DSOURCE_DIRS=<dir;dir> -DPLATFORM=linux-x86_64
#   -DLIBRARY=<libdisttrain file> -DLIBRARY_NAME=<its soname>
#   -DGLUE=<libdisttrain_java file>
foreach(_var STAGE SOURCE_DIRS PLATFORM LIBRARY LIBRARY_NAME GLUE)
  if(NOT DEFINED ${_var})
    message(FATAL_ERROR "stage.cmake: ${_var} is not set")
  endif()
endforeach()

# Stale copies of removed sources must not end up in the artifact.
file(REMOVE_RECURSE "${STAGE}/src")
set(_java "${STAGE}/src/main/java")
foreach(_dir IN LISTS SOURCE_DIRS)
  file(COPY "${_dir}/" DESTINATION "${_java}" FILES_MATCHING PATTERN "*.java")
endforeach()

set(_native "${STAGE}/src/main/resources/org/disttrain/native/${PLATFORM}")
file(MAKE_DIRECTORY "${_native}")
get_filename_component(_glue_name "${GLUE}" NAME)
# The library under its soname, the name the glue's DT_NEEDED asks for.
file(COPY_FILE "${LIBRARY}" "${_native}/${LIBRARY_NAME}")
file(COPY_FILE "${GLUE}" "${_native}/${_glue_name}")
# The build tree's glue runs from the build directory; the jar's copy must
# look beside itself only, as the installed one does.
file(RPATH_SET FILE "${_native}/${_glue_name}" NEW_RPATH "$ORIGIN")
file(WRITE "${_native}/libraries" "${LIBRARY_NAME}\n${_glue_name}\n")
