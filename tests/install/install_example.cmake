# cmake -DBUILD_DIR=... -DSOURCE_DIR=... [-DSANITIZE=address,undefined] -P install_example.cmake
set(work ${BUILD_DIR}/install-test)
file(REMOVE_RECURSE ${work})
function(run)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGV}\n${out}\n${err}")
  endif()
  message("${out}")
endfunction()
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${work}/prefix)
set(flags "")
if(SANITIZE)
  set(flags "-fsanitize=${SANITIZE}")  # the installed library was built with them
endif()
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples -B ${work}/build -G Ninja
    -DCMAKE_PREFIX_PATH=${work}/prefix "-DCMAKE_CXX_FLAGS=${flags}"
    "-DCMAKE_EXE_LINKER_FLAGS=${flags}")
run(${CMAKE_COMMAND} --build ${work}/build)
run(${work}/build/basic ${work}/example.pool)
