# Compiles Java sources into a jar at build time (cmake -P). The SWIG-generated
# sources are only known after SWIG has run, so they are globbed here, not at
# configure time.
#
#   -DJAVAC= -DJAR= -DOUTPUT=<jar> -DCLASSES=<dir> -DSOURCE_DIRS=<dir;dir>
#   [-DCLASSPATH=<a:b>] [-DRELEASE=11]
foreach(_var JAVAC JAR OUTPUT CLASSES SOURCE_DIRS)
  if(NOT DEFINED ${_var})
    message(FATAL_ERROR "compile_jar.cmake: ${_var} is not set")
  endif()
endforeach()
if(NOT DEFINED RELEASE)
  set(RELEASE 11)
endif()

set(_sources)
foreach(_dir IN LISTS SOURCE_DIRS)
  file(GLOB_RECURSE _found "${_dir}/*.java")
  list(APPEND _sources ${_found})
endforeach()
if(NOT _sources)
  message(FATAL_ERROR "compile_jar.cmake: no .java files under ${SOURCE_DIRS}")
endif()

# Stale classes of removed sources must not end up in the jar.
file(REMOVE_RECURSE "${CLASSES}")
file(MAKE_DIRECTORY "${CLASSES}")
set(_cp)
if(CLASSPATH)
  set(_cp -classpath "${CLASSPATH}")
endif()
execute_process(
  COMMAND "${JAVAC}" --release ${RELEASE} -encoding UTF-8 -Xlint:all,-options -Werror ${_cp} -d "${CLASSES}" ${_sources}
  RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "javac failed (${_rc})")
endif()
execute_process(COMMAND "${JAR}" --create --file "${OUTPUT}" -C "${CLASSES}" . RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "jar failed (${_rc})")
endif()
