# cmake -DCXX= -DVIEW= -DINCLUDE= -DHEADER= -DEXPECT=compiles|fails -DWORK= -P this file
file(MAKE_DIRECTORY ${WORK})
file(WRITE ${WORK}/probe.cc "#include \"${HEADER}\"\n")
execute_process(COMMAND ${CXX} -std=c++20 -fsyntax-only -I${INCLUDE} -I${VIEW} ${WORK}/probe.cc
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(EXPECT STREQUAL "compiles" AND NOT rc EQUAL 0)
  message(FATAL_ERROR "${HEADER} should compile in ${VIEW}:\n${err}")
elseif(EXPECT STREQUAL "fails" AND rc EQUAL 0)
  message(FATAL_ERROR "${HEADER} compiled in ${VIEW}, but it belongs to a higher layer")
# g++ says "No such file or directory", clang "file not found".
elseif(EXPECT STREQUAL "fails" AND NOT err MATCHES "No such file|file not found")
  message(FATAL_ERROR "${HEADER} failed in ${VIEW} for another reason than a missing file:\n${err}")
endif()
message("${HEADER} in ${VIEW}: ${EXPECT} as expected")
