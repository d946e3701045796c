# Unit tests of the Python client's pure-Python parts (tests/python/test_*.py: /proc/cpuinfo parsing, SSE
# parsing, the cache's digest check), plain unittest on /usr/bin/python3 with python/ on the path.
add_test(NAME python_client.units
         COMMAND /usr/bin/python3 -m unittest discover -v -s ${CMAKE_CURRENT_SOURCE_DIR}/python -p "test_*.py")
set_tests_properties(python_client.units PROPERTIES ENVIRONMENT "PYTHONPATH=${PROJECT_SOURCE_DIR}/python"
                     TIMEOUT 60)
