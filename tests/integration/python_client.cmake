# The Python client (python/) and ?target=auto against the real daemon: auto (the server's choice of target
# for a client's CPU features, CPU name or CUDA arch), client (tests/integration/python_client.py in a fresh
# venv with `pip install ./python`, run with /usr/bin/python3).
foreach(case auto client)
  th_integration_test(python_client_${case} TIMEOUT 900
                      COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/python_client.sh ${case}
                      ENVIRONMENT "TUNEHUB=$<TARGET_FILE:tunehub>" "TH_SRC=${PROJECT_SOURCE_DIR}")
endforeach()
# ctest -j starts the longest first (tests/CMakeLists.txt): the client case took 20 to 34 s here
foreach(t integration.python_client_client cluster.integration.python_client_client)
  set_tests_properties(${t} PROPERTIES COST 30)
endforeach()
