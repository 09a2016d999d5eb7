# tests of src/sim and comm
