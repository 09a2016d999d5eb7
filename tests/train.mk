# tests of src/model and par
