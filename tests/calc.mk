# tests of src/calc and comm/cost
