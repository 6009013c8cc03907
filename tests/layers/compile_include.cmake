# cmake -DCXX= -DDIRS=dir|dir... -DIMPLICIT=dir|dir... -DHEADER= -DEXPECT=compiles|fails -DWORK= -P this file
file(MAKE_DIRECTORY ${WORK})
file(WRITE ${WORK}/probe.cc "#include \"${HEADER}\"\n")
string(REPLACE "|" ";" dirs "${DIRS}")
string(REPLACE "|" ";" implicit "${IMPLICIT}")
list(REMOVE_DUPLICATES dirs)
list(REMOVE_ITEM dirs ${implicit})  # the compiler's own, searched after -I's as in the build
set(flags "")
foreach(dir IN LISTS dirs)
  list(APPEND flags -I${dir})
endforeach()
execute_process(COMMAND ${CXX} -std=c++20 -fsyntax-only ${flags} ${WORK}/probe.cc
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(EXPECT STREQUAL "compiles" AND NOT rc EQUAL 0)
  message(FATAL_ERROR "${HEADER} should compile with ${flags}:\n${err}")
elseif(EXPECT STREQUAL "fails" AND rc EQUAL 0)
  message(FATAL_ERROR "${HEADER} compiled with ${flags}, but it is outside the view")
# g++ says "No such file or directory", clang "file not found".
elseif(EXPECT STREQUAL "fails" AND NOT err MATCHES "No such file|file not found")
  message(FATAL_ERROR "${HEADER} failed with ${flags} for another reason than a missing file:\n${err}")
endif()
message("${HEADER} with ${flags}: ${EXPECT} as expected")
