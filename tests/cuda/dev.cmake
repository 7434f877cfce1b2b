# Device API tests (tests/cuda/dev_*.cu): SPMD programs whose kernels use
# include/shmemx_device.cuh, built with nvcc against libushmem.so when CMake
# found nvcc (and the library embeds its CUDA kernels: dev_amo mixes in the
# host API's device-memory AMOs). Run under ushrun with 2 and 4 PEs sharing
# GPU 0; they exit 77 (skipped) where no GPU is usable. dev_rma never waits on
# the device, so it runs everywhere; dev_amo's device-wait part, dev_coll
# (collectives) and dev_wait (vector waits) run only where shmemx_dev_why()
# allows it (MPS via ushrun --mps, one PE per GPU, or
# USHMEM_DEVICE_WAIT=timesliced); dev_refuse.sh checks the refusal where it
# does not. Included from tests/cuda/CMakeLists.txt.
if(USHMEM_NVCC AND USHMEM_CUDA_KERNELS AND NOT USHMEM_SANITIZE) # nvcc links no sanitizer runtime
  set(USHMEM_DEV_TEST_HEADERS
      ${CMAKE_CURRENT_LIST_DIR}/dev_test.cuh
      ${CMAKE_SOURCE_DIR}/include/shmemx_device.cuh
      ${CMAKE_SOURCE_DIR}/include/shmemx_device_coll.cuh
      ${CMAKE_SOURCE_DIR}/include/shmemx_device_wait.cuh
      ${CMAKE_SOURCE_DIR}/include/shmemx_device_types.h
      ${CMAKE_SOURCE_DIR}/include/shmemx.h
      ${CMAKE_SOURCE_DIR}/include/shmem.h
      ${CMAKE_SOURCE_DIR}/include/shmem_gen.h)
  set(USHMEM_DEV_TEST_LINK $<TARGET_LINKER_FILE:ushmem> -Xlinker -rpath=$<TARGET_FILE_DIR:ushmem>
      -ldl -lpthread)
  # A test is one program of one or more .cu parts, each compiled to an object,
  # then linked. dev_coll is two (dev_coll.cu, dev_coll_reduce.cu, sharing
  # dev_coll.cuh) only for compile time: as one it was the build's last and
  # longest step; its halves compile in parallel.
  set(USHMEM_DEV_TEST_OUTPUTS)
  foreach(name dev_rma dev_amo dev_moe dev_coll dev_wait)
    set(out ${CMAKE_CURRENT_BINARY_DIR}/${name})
    set(parts ${name})
    set(part_headers)
    if(name STREQUAL "dev_coll")
      list(APPEND parts dev_coll_reduce)
      set(part_headers ${CMAKE_CURRENT_LIST_DIR}/dev_coll.cuh)
    endif()
    set(objs)
    foreach(part ${parts})
      set(src ${CMAKE_CURRENT_LIST_DIR}/${part}.cu)
      set(obj ${CMAKE_CURRENT_BINARY_DIR}/${part}.o)
      add_custom_command(OUTPUT ${obj}
        COMMAND ${USHMEM_NVCC} ${USHMEM_DEV_TEST_NVCC_FLAGS} -c ${src} -o ${obj}
        DEPENDS ${src} ${part_headers} ${USHMEM_DEV_TEST_HEADERS}
        COMMENT "nvcc: device API test ${name} (${part}.cu)")
      list(APPEND objs ${obj})
    endforeach()
    add_custom_command(OUTPUT ${out}
      COMMAND ${USHMEM_NVCC} ${USHMEM_DEV_TEST_NVCC_FLAGS} ${objs} -o ${out} ${USHMEM_DEV_TEST_LINK}
      DEPENDS ${objs} ushmem
      COMMENT "nvcc: device API test ${name} (link)")
    list(APPEND USHMEM_DEV_TEST_OUTPUTS ${out})
    foreach(n 2 4)
      add_test(NAME cuda/${name}/np${n}
               COMMAND $<TARGET_FILE:ushrun> --timeout 120 -n ${n} ${out})
      set_tests_properties(cuda/${name}/np${n} PROPERTIES TIMEOUT 180 SKIP_RETURN_CODE 77
                           ENVIRONMENT "${USHMEM_CUDA_TEST_ENV}")
    endforeach()
  endforeach()
  # Where the whole job is on one GPU, barriers and collectives order at GPU
  # scope; USHMEM_DEVICE_SCOPE=sys keeps the system-scope path tested there too.
  foreach(name dev_amo dev_coll)
    add_test(NAME cuda/${name}_sys/np4
             COMMAND $<TARGET_FILE:ushrun> --timeout 120 -n 4 ${CMAKE_CURRENT_BINARY_DIR}/${name})
    set_tests_properties(cuda/${name}_sys/np4 PROPERTIES TIMEOUT 180 SKIP_RETURN_CODE 77
                         ENVIRONMENT "${USHMEM_CUDA_TEST_ENV};USHMEM_DEVICE_SCOPE=sys")
  endforeach()
  add_custom_target(ushmem_dev_tests ALL DEPENDS ${USHMEM_DEV_TEST_OUTPUTS})
  # tests/mpi runs them again with PEs on pretend hosts
  set_property(GLOBAL PROPERTY USHMEM_DEV_TEST_OUTPUTS ${USHMEM_DEV_TEST_OUTPUTS})

  # A device wait where waits are off: one line per PE, a trap, a failed job;
  # the same for a device collective.
  add_test(NAME cuda/dev_refuse
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/dev_refuse.sh $<TARGET_FILE:ushrun>
                   ${CMAKE_CURRENT_BINARY_DIR}/dev_amo)
  add_test(NAME cuda/dev_coll_refuse
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/dev_refuse.sh $<TARGET_FILE:ushrun>
                   ${CMAKE_CURRENT_BINARY_DIR}/dev_coll shmemx_dev_alltoallmem_block)
  # A device call naming a PE outside the team: one line, a trap, a failed job.
  add_test(NAME cuda/dev_badpe
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/dev_badpe.sh $<TARGET_FILE:ushrun>
                   ${CMAKE_CURRENT_BINARY_DIR}/dev_amo)
  # A device vector wait that nothing satisfies traps at USHMEM_DEVICE_WAIT_TIMEOUT.
  add_test(NAME cuda/dev_wait_timeout
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/dev_wait_timeout.sh $<TARGET_FILE:ushrun>
                   ${CMAKE_CURRENT_BINARY_DIR}/dev_wait)
  set_tests_properties(cuda/dev_refuse cuda/dev_coll_refuse cuda/dev_badpe cuda/dev_wait_timeout
                       PROPERTIES TIMEOUT 180 SKIP_RETURN_CODE 77
                       ENVIRONMENT "${USHMEM_CUDA_TEST_ENV}")
endif()
