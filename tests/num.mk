# tests of src/num
